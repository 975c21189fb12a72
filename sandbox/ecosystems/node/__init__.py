"""Node: the version a project asks for, the image that has it, its set-up and its tests."""
