"""nini over the Model Context Protocol: its enabled skills as tools, a session's files as resources."""
