"""Stage 6: findings, priorities, the performance plot and the final report."""
