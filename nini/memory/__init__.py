"""What nini remembers between analyses: a team's and a project's experience (``experience``)."""
