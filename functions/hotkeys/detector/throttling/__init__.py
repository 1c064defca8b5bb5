"""The throttle picture: DynamoDB's throttle alarms and Contributor Insights' throttled keys, explained
and joined with the stream's figures; Contributor Insights' ownership on the watched tables."""
