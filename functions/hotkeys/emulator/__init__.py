"""The local world the CLI, the benchmarks and the tests run the detector in: DynamoDB stream records and event
files (``events``, ``io``), synthetic workloads (``generate``), a stream read with GetRecords (``streams``),
the resources a replay makes on moto (``local``), and Lambda's event source mapping as AWS documents it
(``esm``, ``lanes``, ``emulation``). Not in the function's asset: nothing here runs in Lambda."""
