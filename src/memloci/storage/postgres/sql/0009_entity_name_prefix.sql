-- memloci PostgreSQL schema v9: people are found by their given name ("Caroline" finds
-- "Caroline Okafor", see memloci.storage.names). The lookup asks for the names that
-- start with a word; this index answers that with bytewise comparisons (~>=~ / ~<~),
-- whatever the database's collation.
CREATE INDEX IF NOT EXISTS entity_names_prefix ON entity_names (namespace, name_norm text_pattern_ops);
