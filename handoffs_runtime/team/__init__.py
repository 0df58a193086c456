"""A team as data and how it comes alive: spec, build, register, graph, and one chat in this process."""
