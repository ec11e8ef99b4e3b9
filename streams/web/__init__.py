"""The worker's HTTP API: routes, the views of published results it answers from, and cohort writes."""
