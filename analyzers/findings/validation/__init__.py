"""A run's files checked against each other and against the findings contract."""
