"""Work done off a request's path, from the database: webhook deliveries retried
(``outbox``), every future step as a due-time row (``schedule``), and replicas'
notices, heartbeats and held sends (``replicas``)."""
