"""What agents talk to: the stdio bridge, MCP, hooks, the OpenClaw installer, the daemon."""
