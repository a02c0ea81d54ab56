"""The paddle room's own tests (run in its tox envs, paddle and paddle26): the adapter held to
hand-written Paddle code. A package, so that its test files may share their names with other rooms'."""
