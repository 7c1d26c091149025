"""Grouping findings into hazards: groups, the fold kernels, pools."""
