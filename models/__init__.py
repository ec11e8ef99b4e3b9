"""The wire and the documents: events as producers send them (`events`, decoded by `wire`), the state a
call keeps (`call_state`), the result document a worker publishes (`results`), dead letters, cohorts,
alert rules and alerts, and the evaluation harness's scenarios. Declared once as msgspec structures, from
which validation, encoding and the JSON Schemas in schemas/ all come. Depends on nothing above it."""
