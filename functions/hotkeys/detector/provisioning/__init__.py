"""The deploy-time custom resources' logic: a stream's event source mapping (``stream_mapping``), a table's
stream (``stream_enabler``) and Contributor Insights on a table and who owns it (``insights_enabler``,
``insights_owners``). Their handlers (``handlers/*_app.py``) read CloudFormation's request, build the clients
and answer; what is done with AWS's APIs, and every wait for it (``polling``), is here."""
