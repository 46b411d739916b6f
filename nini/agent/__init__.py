"""The agent: LLM providers and purpose routing, the run loop, task:* sub-agents and their summaries."""
