"""Node (JavaScript and TypeScript): the version a project asks for, the image that has it,
its set-up, and how its tests run and report."""
