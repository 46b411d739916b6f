"""What nini remembers between analyses: a team's and a project's experience (``experience``) and
a user's preferences (``preferences``)."""
