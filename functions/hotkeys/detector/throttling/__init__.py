"""The throttle picture: DynamoDB's throttle alarms and Contributor Insights' throttled keys, explained
and joined with the stream's figures (who turns Contributor Insights on is ``provisioning``'s)."""
