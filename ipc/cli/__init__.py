"""The `ctx` command line: talks to a running engine over ZeroMQ, or opens the store itself."""
