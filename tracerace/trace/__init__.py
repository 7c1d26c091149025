"""The trace format and its IO: schema, reader, writer, rules, info, output files."""
