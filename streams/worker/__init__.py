"""The live scoring worker: the Faust app, what it does with each message (message flow, live scorer), its event-time
clock, prompt stop on SIGTERM, and running a worker as a child process."""
