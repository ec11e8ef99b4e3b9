"""Kafka plumbing: plain aiokafka clients with the deployment's settings, the embedded broker, the Faust transports that
work around its limits, broker health and the throttling of aiokafka's repeated complaints."""
