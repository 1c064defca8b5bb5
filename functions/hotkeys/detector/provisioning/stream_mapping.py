"""Deploy-time custom resource (``Custom::StreamMapping``): the event source mapping of one function on one
DynamoDB stream (or, in the Kinesis modes, one Kinesis data stream or enhanced fan-out consumer of one), owned
by the stack under the mapping's UUID (the physical id, which the CLI reads).

Why not ``AWS::Lambda::EventSourceMapping``: CloudFormation cannot change its ``StartingPosition`` or
``EventSourceArn`` in place, so it creates the replacement before deleting the old one, and Lambda refuses a
second mapping of the same function and event source (ResourceConflictException): the update rolls back.

* Create: a mapping of the same function and stream that already exists (an earlier release's
  ``AWS::Lambda::EventSourceMapping``, or one made by hand) is displaced: deleted, waited for until Lambda no
  longer knows it, then the new mapping is created. A create that fails after a displacement re-creates
  what it displaced, at LATEST (the provider framework ignores the rollback's delete of a failed create, so
  nothing else would) and fails with the original error. A displaced mapping still not gone after the wait
  leaves nothing to create or restore (Lambda would refuse both): the create answers without a mapping
  (NOT_CREATED_PREFIX and the stream), logged as an error, rather than fail. A failure would roll the stack
  back to the release whose mapping it displaced, which names a mapping no longer there and has no alarm for
  an unread stream; answered, the stack keeps this release, whose StreamUnread alarm names the table until
  the next deploy creates its mapping (an Update of a resource without one creates it). A create that fails
  once its mapping exists (or may exist: an answer lost on the way) first deletes that mapping, then
  restores; a mapping it cannot delete in time is its answer instead of the failure (logged as an error): a
  failed create's mapping would belong to nobody, the stack's delete removes an answered one.
* Update: a move to another function or stream (or a rollback's move back) keeps a mapping of the target
  that exists (the original, which the cleanup has not deleted yet), else creates one under a new id
  (CloudFormation then deletes the old id). Otherwise the mapping is updated in place with every setting
  UpdateEventSourceMapping accepts, under the same id. ``StartingPosition`` is not among them: a starting
  position applies when a mapping is created, so changing it changes nothing for a mapping that exists. A
  setting removed from the properties keeps its current value (an update changes only what it is given):
  to go back to a default, set the default. Every deploy sends an Update (``SynthesizedAt`` changes at
  each synth), so a redeploy repairs what changed outside the stack: a mapping deleted is created again, a
  disabled one enabled (``Enabled`` is a setting), changed settings set back, filters removed; a table's
  new stream (its enabler's new ``StreamArn``) arrives as a move. Only what differs from the mapping Lambda
  describes is sent, and nothing when nothing differs: an update restarts the mapping's polling.
* Delete: only the UUID this resource owns, never a mapping found by listing; a mapping already gone
  (displaced by a newer resource of the same function and stream) is success; it answers once Lambda has
  deleted the mapping. One exception: while CloudFormation undoes a failed update that displaced an earlier
  release's ``AWS::Lambda::EventSourceMapping`` (its UUID gone from Lambda), the mapping is kept: the stack
  returns to a resource that names no mapping, and the stream would otherwise go unread.
* Every answer waits until the mapping has settled (Enabled or Disabled), and a refusal while it settles
  (ResourceInUseException) or while the consumer's new role is not yet seen is retried, all of it within one
  deadline per invocation: the Lambda context's remaining time less ANSWER_SECONDS (BUDGET_SECONDS without
  a context), so that the handler answers before its function times out (CloudFormation would otherwise
  wait for its ServiceTimeout, and a create's side effects would be left undone). A create keeps the last
  UNDO_SECONDS of it to undo itself; a settle wait that runs out of time answers all the same.

Settings arrive coerced to Lambda's types (``mapping_settings.coerce_settings``). Any other error from Lambda
fails the deploy with that error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from hotkeys.deployment import EARLIER_MAPPING_TYPE, NOT_CREATED_PREFIX
from hotkeys.detector.domain.records import MalformedRecord, table_from_arn
from hotkeys.detector.observability import logger
from hotkeys.detector.provisioning.mapping_settings import MOVING, drift
from hotkeys.detector.provisioning.polling import Deadline, poll_until, retry_while

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_lambda import LambdaClient

__all__ = [
    "ANSWER_SECONDS",
    "BUDGET_SECONDS",
    "POLL_SECONDS",
    "UNDO_SECONDS",
    "MappingSpec",
    "UpdateRequest",
    "create",
    "deadline_of",
    "delete",
    "kept_on_rollback",
    "update",
]

T = TypeVar("T")


# Lambda: "When you delete an event source mapping, it enters a Deleting state and might not be completely
# deleted for several seconds"; a mapping Creating or Updating refuses an update or a delete
# (ResourceInUseException); a role just granted may not yet be seen (InvalidParameterValueException, "Cannot
# access stream"). Every wait and retry of one invocation shares one deadline (``Deadline``): its function's
# remaining time less ANSWER_SECONDS, room for one more call past it (the SDK's 3 attempts with 2 s connect
# and 5 s read timeouts) and the answer; BUDGET_SECONDS without a Lambda context (tests, a direct call). A
# create's waits stop UNDO_SECONDS earlier, so that a failure after its create leaves time to delete the
# mapping it made and restore what it displaced.
ANSWER_SECONDS = 30.0
UNDO_SECONDS = 120.0
BUDGET_SECONDS = 600.0
POLL_SECONDS = 2.0
SETTLED = ("Enabled", "Disabled")
# CloudFormation's stack statuses while it undoes a failed update ("UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS:
# Ongoing removal of new resources ... after a failed stack update", its user guide's stack status codes).
ROLLING_BACK_AN_UPDATE = ("UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS")
# The event sources of the Kinesis modes (-c kinesisStreamArn, -c enableKinesis): a data stream, or an enhanced
# fan-out consumer of one (arn:PARTITION:kinesis:REGION:ACCOUNT:stream/NAME/consumer/CONSUMER:TIMESTAMP), told by
# the ARN's service in any partition: the options take any, and the stack's own stream's ARN has the deploy's.
KINESIS_SERVICE = "kinesis"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True)
class MappingSpec:
    """The mapping a resource declares: ``function`` on ``source`` (the stream's ARN), with ``settings``
    (CreateEventSourceMapping's parameters, coerced to Lambda's types)."""

    function: str
    source: str
    settings: dict[str, Any]


@dataclass(frozen=True)
class UpdateRequest:
    """What an Update says beside the mapping it declares: the resource's ``physical_id``, its properties
    before (``old``), and its Settings as CloudFormation sent them (``sent``: strings, like ``old``'s)."""

    physical_id: str
    old: Mapping[str, Any]
    sent: Mapping[str, Any]


def deadline_of(context: Any, clock: Callable[[], float], sleep: Callable[[float], None]) -> Deadline:
    """The Lambda ``context``'s remaining time less ANSWER_SECONDS; BUDGET_SECONDS from now without one."""
    left = None if context is None else context.get_remaining_time_in_millis() / 1000
    return Deadline(clock() + (BUDGET_SECONDS if left is None else left - ANSWER_SECONDS), clock, sleep, POLL_SECONDS)


# -- create ----------------------------------------------------------------------------------------------


def create(client: LambdaClient, spec: MappingSpec, deadline: Deadline) -> str:
    """The mapping ``spec`` declares, made after displacing any other of its function and stream: its UUID."""
    # Every wait before the undo stops UNDO_SECONDS early: a failure after the create has time to undo it.
    work = deadline.before(UNDO_SECONDS)
    function, source = spec.function, spec.source
    existing = _mappings(client, function, source)
    displaced: list[dict[str, Any]] = []
    for mapping in existing:
        if mapping.get("State") != "Deleting" and _delete_mapping(client, str(mapping["UUID"]), work):
            displaced.append(mapping)
            logger.info(
                "displaced event source mapping of the same function and stream",
                extra={
                    "uuid": mapping["UUID"],
                    "function": mapping.get("FunctionArn"),
                    "event_source": mapping.get("EventSourceArn"),
                    "state": mapping.get("State"),
                },
            )
    waiting_since = deadline.clock()
    still = _wait_until_gone(client, [str(mapping["UUID"]) for mapping in existing], work)
    if still:
        # (no restore: while the old mapping exists, no mapping of that function and stream can be created)
        logger.error(
            "displaced event source mapping(s) still exist after being deleted (Lambda deletes a mapping in the "
            "background): the new mapping was not created, and the stream is unread until the next deploy creates "
            "it (cdk deploy, once `aws lambda get-event-source-mapping --uuid <UUID>` says ResourceNotFoundException)",
            extra={"uuids": still, "waited_seconds": round(deadline.clock() - waiting_since), "event_source": source},
        )
        return NOT_CREATED_PREFIX + source
    try:
        created = _retrying(
            lambda: client.create_event_source_mapping(FunctionName=function, EventSourceArn=source, **spec.settings),
            "InvalidParameterValueException",
            work,
        )
        uuid = str(created["UUID"])
    except Exception as error:
        # (a create whose answer was lost on the way may have made a mapping all the same: _undo looks for it)
        kept = _undo(client, spec, None, displaced, error, deadline)
        if kept is None:
            raise
        return kept
    try:
        _wait_until_settled(client, uuid, work)
    except Exception as error:
        kept = _undo(client, spec, uuid, displaced, error, deadline)
        if kept is None:
            raise
        return kept
    return uuid


def _undo(
    client: LambdaClient,
    spec: MappingSpec,
    created: str | None,
    displaced: list[dict[str, Any]],
    error: Exception,
    deadline: Deadline,
) -> str | None:
    """Undo a create that failed with ``error``: delete the mapping it made (``created``, and any mapping of the
    pair, whose earlier ones are gone by then: one a lost answer hid), then restore what it displaced.

    None once nothing it made is left (the caller raises ``error``); else the UUID of a mapping it could not
    delete by ``deadline``, which the caller answers with: the provider framework would answer the failure
    with a physical id of its own and ignore the rollback's delete, and the mapping would belong to nobody.
    """
    made = [created] if created is not None else []
    try:
        made += [
            str(m["UUID"])
            for m in _mappings(client, spec.function, spec.source)
            if str(m["UUID"]) not in made and m.get("State") != "Deleting"
        ]
    except Exception as failure:
        error.add_note(f"could not list the mappings of {spec.function} on {spec.source} to undo the create: {failure}")
    for uuid in made:
        try:
            already_gone = not _delete_mapping(client, uuid, deadline)
        except Exception as failure:
            logger.error(
                "could not delete the event source mapping of a failed create: answering with it, so that the "
                "stack owns it (and deletes it with the resource)",
                extra={"uuid": uuid, "error": str(error), "reason": str(failure)},
            )
            return uuid
        logger.info(
            "deleted the event source mapping of a failed create", extra={"uuid": uuid, "already_gone": already_gone}
        )
    try:
        still = _wait_until_gone(client, made, deadline)
    except Exception as failure:
        still = made
        error.add_note(f"could not see whether event source mapping(s) {', '.join(made)} are gone: {failure}")
    if still:
        error.add_note(f"event source mapping(s) {', '.join(still)} deleted but not yet gone by the deadline")
    _restore(client, displaced, error)
    return None


def _mappings(client: LambdaClient, function: str, source: str) -> list[dict[str, Any]]:
    pages = client.get_paginator("list_event_source_mappings").paginate(FunctionName=function, EventSourceArn=source)
    return [dict(mapping) for page in pages for mapping in page.get("EventSourceMappings", [])]


def _delete_mapping(client: LambdaClient, uuid: str, deadline: Deadline) -> bool:
    """Delete one mapping by its UUID (once it has settled): False if Lambda no longer knows it."""
    try:
        _retrying(lambda: client.delete_event_source_mapping(UUID=uuid), "ResourceInUseException", deadline)
    except ClientError as error:
        if _not_found(error):
            return False
        raise
    return True


def _retrying(call: Callable[[], T], code: str, deadline: Deadline) -> T:
    """``call()``, again every POLL_SECONDS while it fails with ``code`` (a state that passes), until ``deadline``
    (then its last error)."""
    return retry_while(call, lambda error: isinstance(error, ClientError) and _code(error) == code, deadline.pause)


def _wait_until_gone(client: LambdaClient, uuids: Iterable[str], deadline: Deadline) -> list[str]:
    """Wait until Lambda knows none of ``uuids``; those it still knows at ``deadline``."""
    waiting = list(uuids)

    def gone() -> bool:
        waiting[:] = [uuid for uuid in waiting if _state(client, uuid) is not None]
        return not waiting

    poll_until(gone, deadline.pause)
    return waiting


def _wait_until_settled(client: LambdaClient, uuid: str, deadline: Deadline) -> None:
    """Wait until the mapping is Enabled or Disabled: a rollback's update or delete right after would be
    refused while it is Creating or Updating. At ``deadline`` the deploy goes on (those retry too)."""
    if not poll_until(lambda: _state(client, uuid) in (*SETTLED, None), deadline.pause):
        logger.warning("event source mapping still settling at the deadline: answering", extra={"uuid": uuid})


def _state(client: LambdaClient, uuid: str) -> str | None:
    """The mapping's State; None when Lambda no longer knows it."""
    described = _described(client, uuid)
    return None if described is None else str(described.get("State", ""))


def _restore(client: LambdaClient, displaced: list[dict[str, Any]], error: Exception) -> None:
    """Re-create what a failed create displaced, with its previous configuration; a restore that fails too is
    logged with that configuration (to re-create it by hand) and noted on ``error``, which the caller raises."""
    accepted = _parameters(client, "CreateEventSourceMapping")
    for mapping in displaced:
        request = _previous_request(mapping, accepted)
        try:
            restored = client.create_event_source_mapping(**request)
        except Exception as failure:
            logger.error(
                "could not restore a displaced event source mapping",
                extra={"uuid": mapping["UUID"], "request": request, "reason": str(failure)},
            )
            error.add_note(f"displaced event source mapping {mapping['UUID']} could not be restored: {failure}")
        else:
            logger.info(
                "restored a displaced event source mapping after a failed create",
                extra={"displaced_uuid": mapping["UUID"], "uuid": restored["UUID"]},
            )


def _previous_request(mapping: dict[str, Any], accepted: Iterable[str]) -> dict[str, Any]:
    """The CreateEventSourceMapping request of a mapping as Get/List describe it: what they return that
    Create accepts, the function by its ARN, Enabled from its State, and LATEST: no mapping resumes another's
    position, and TRIM_HORIZON would count the stream's last 24 h a second time."""
    request = {name: value for name, value in mapping.items() if name in accepted and name != "FunctionName"}
    request["FunctionName"] = mapping["FunctionArn"]
    request["Enabled"] = mapping.get("State") not in ("Disabled", "Disabling")
    request["StartingPosition"] = "LATEST"
    request.pop("StartingPositionTimestamp", None)
    return request


# -- update and delete -----------------------------------------------------------------------------------


def update(client: LambdaClient, spec: MappingSpec, deadline: Deadline, request: UpdateRequest) -> str:
    """The mapping ``spec`` declares after an Update: its UUID (a new one where it had to be created)."""
    function, source, settings = spec.function, spec.source, spec.settings
    old = request.old
    accepted = _parameters(client, "UpdateEventSourceMapping") - {"UUID", *MOVING}
    changes = {k: v for k, v in settings.items() if k in accepted}
    if tuple(str(old.get(name)) for name in MOVING) != (function, source):
        # A move, or a rollback's move back: a mapping of the target function and stream that exists (the
        # original, which the cleanup has not deleted yet) is updated and kept, never recreated.
        found = [m for m in _mappings(client, function, source) if m.get("State") != "Deleting"]
        if not found:
            return create(client, spec, deadline)
        uuid = str(found[0]["UUID"])
    else:
        uuid = request.physical_id
        if not _UUID.fullmatch(uuid):
            logger.warning("no event source mapping yet: creating it", extra={"physical_id": uuid})
            return create(client, spec, deadline)
    _warn_of_what_stays(old.get("Settings") or {}, request.sent, accepted)
    current = _described(client, uuid)
    if current is None:
        logger.warning("event source mapping gone: creating it again", extra={"uuid": uuid})
        return create(client, spec, deadline)
    differing = drift(changes, current)
    if not differing:
        # Every deploy sends an Update (SynthesizedAt): one that would change nothing is not sent, since
        # Lambda stops and restarts polling for an update ("may take up to 90 seconds"), and a mapping at
        # LATEST "could miss events during a create or update".
        return uuid
    logger.info(
        "event source mapping differs from the stack's: updating it",
        extra={"uuid": uuid, "settings": sorted(differing)},
    )
    try:
        _retrying(
            lambda: client.update_event_source_mapping(UUID=uuid, **differing), "ResourceInUseException", deadline
        )
    except ClientError as error:
        if not _not_found(error):
            raise
        logger.warning("event source mapping gone: creating it again", extra={"uuid": uuid})
        return create(client, spec, deadline)
    _wait_until_settled(client, uuid, deadline)
    return uuid


def _parameters(client: LambdaClient, operation: str) -> set[str]:
    """The request parameters of a Lambda ``operation`` in botocore's model."""
    shape = client.meta.service_model.operation_model(operation).input_shape
    if shape is None:  # (not so for any operation called here: each takes a request)
        raise ValueError(f"botocore's Lambda model has no request for {operation}")
    return set(shape.members)


def _described(client: LambdaClient, uuid: str) -> dict[str, Any] | None:
    """The mapping as GetEventSourceMapping describes it; None when Lambda no longer knows it."""
    try:
        return dict(client.get_event_source_mapping(UUID=uuid))
    except ClientError as error:
        if _not_found(error):
            return None
        raise


def _warn_of_what_stays(old: Mapping[str, Any], new: Mapping[str, Any], accepted: set[str]) -> None:
    # Old and new as CloudFormation sent them (both strings), so that an unchanged value never differs.
    fixed = sorted(name for name in old.keys() | new.keys() if name not in accepted and old.get(name) != new.get(name))
    if fixed:
        logger.warning(
            "settings that apply only when a mapping is created changed: the mapping keeps its own",
            extra={"settings": fixed},
        )
    kept = sorted(name for name in old if name in accepted and name not in new)
    if kept:
        logger.warning("settings removed from the properties keep their current values", extra={"settings": kept})


def delete(client: LambdaClient, uuid: str, deadline: Deadline) -> None:
    """Delete the mapping this resource owns (``uuid``, its physical id), and wait until it is gone."""
    # (Only a UUID this resource created: the provider framework answers the Delete after a failed Create.)
    if _UUID.fullmatch(uuid):
        if _delete_mapping(client, uuid, deadline):
            # Gone before the stack deletes the consumer's role and queue, which a Deleting mapping still uses.
            _wait_until_gone(client, [uuid], deadline)
        else:
            logger.info("event source mapping already gone", extra={"uuid": uuid})


def kept_on_rollback(
    cloudformation: Callable[[], CloudFormationClient], client: LambdaClient, stack_id: Any, source: str, uuid: str
) -> bool:
    """Whether the Delete of ``uuid`` keeps the mapping: the stack goes back to an earlier release whose
    mapping resource names the mapping this resource's create displaced, and deleting this one would leave the
    stream unread (the next deploy of this release displaces it again). ``cloudformation`` makes the client,
    only when ``uuid`` is a mapping's. A Kinesis stream or consumer is never kept: no earlier release mapped one."""
    if (
        not _UUID.fullmatch(uuid)
        or _is_kinesis(source)
        or not _rolled_back_onto_a_displaced_mapping(cloudformation(), client, stack_id, source)
    ):
        return False
    logger.warning("rollback to an earlier release: the event source mapping is kept", extra={"uuid": uuid})
    return True


def _is_kinesis(source: str) -> bool:
    """A Kinesis data stream's ARN or an enhanced fan-out consumer's, in whichever partition."""
    parts = source.split(":", 3)
    return len(parts) == 4 and parts[0] == "arn" and parts[2] == KINESIS_SERVICE


def _rolled_back_onto_a_displaced_mapping(
    cloudformation: CloudFormationClient, client: LambdaClient, stack_id: Any, source: str
) -> bool:
    """The stack is removing what a failed update created, and holds an earlier release's mapping resource
    (``AWS::Lambda::EventSourceMapping``) of ``source``'s table whose mapping Lambda no longer has: a create of
    that update displaced it. The earlier resource's table is read from the template the stack went back to
    (its stream ARN, or the TableName of the stream enabler it names); one the template does not describe
    counts as this table's (a reader too many rather than none). A stack that cannot be read is taken as not
    rolling back: the Delete goes on, as it always did."""
    if not stack_id:
        return False
    try:
        (stack,) = cloudformation.describe_stacks(StackName=str(stack_id))["Stacks"]
        if stack.get("StackStatus") not in ROLLING_BACK_AN_UPDATE:
            return False
        pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=str(stack_id))
        displaced = [
            str(summary["LogicalResourceId"])
            for page in pages
            for summary in page.get("StackResourceSummaries", [])
            if summary.get("ResourceType") == EARLIER_MAPPING_TYPE
            and _UUID.fullmatch(str(summary.get("PhysicalResourceId") or ""))
            and _state(client, str(summary["PhysicalResourceId"])) is None
        ]
        if not displaced:
            return False
        body = cloudformation.get_template(StackName=str(stack_id), TemplateStage="Original")["TemplateBody"]
    except ClientError as error:
        logger.error("could not read the stack: the mapping is deleted", extra={"reason": str(error)})
        return False
    resources = (json.loads(body) if isinstance(body, str) else dict(body)).get("Resources", {})
    table = _table_of(source)
    return any(_earlier_table(resources, logical_id) in (table, None) for logical_id in displaced)


def _earlier_table(resources: dict[str, Any], logical_id: str) -> str | None:
    """The table an earlier release's mapping resource reads, as its template says; None if it does not say."""
    arn = (resources.get(logical_id) or {}).get("Properties", {}).get("EventSourceArn")
    if isinstance(arn, str):
        return _table_of(arn)
    if isinstance(arn, dict) and isinstance(arn.get("Fn::GetAtt"), list) and arn["Fn::GetAtt"][1:] == ["StreamArn"]:
        enabler = resources.get(arn["Fn::GetAtt"][0]) or {}
        name = enabler.get("Properties", {}).get("TableName")
        return str(name) if isinstance(name, str) else None
    return None


def _table_of(stream_arn: str) -> str | None:
    """The stream's table (``records.table_from_arn``); None for what is not a stream ARN."""
    try:
        return table_from_arn(stream_arn)
    except MalformedRecord:
        return None


def _not_found(error: ClientError) -> bool:
    return _code(error) == "ResourceNotFoundException"


def _code(error: ClientError) -> str | None:
    code = error.response.get("Error", {}).get("Code")
    return None if code is None else str(code)
