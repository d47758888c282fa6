-- memloci SQLite schema v8: names are often typed without their accents ("Jose" for
-- a speaker "José"), so an entity is also found by its names without them
-- (memloci.storage.names.lookup_names, which the store uses for every entity it saves).
-- This adds those forms for the entities of an older store (the common accented Latin
-- letters).
INSERT OR IGNORE INTO entity_names (namespace, name_norm, entity_id)
SELECT DISTINCT namespace, plain, entity_id FROM (
    SELECT namespace, entity_id, name_norm,
        replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(name_norm, 'à', 'a'), 'á', 'a'), 'â', 'a'), 'ã', 'a'), 'ä', 'a'), 'å', 'a'), 'ā', 'a'), 'ă', 'a'), 'ą', 'a'), 'ç', 'c'), 'ć', 'c'), 'č', 'c'), 'ď', 'd'), 'è', 'e'), 'é', 'e'), 'ê', 'e'), 'ë', 'e'), 'ē', 'e'), 'ė', 'e'), 'ę', 'e'), 'ě', 'e'), 'ì', 'i'), 'í', 'i'), 'î', 'i'), 'ï', 'i'), 'ī', 'i'), 'į', 'i'), 'ñ', 'n'), 'ń', 'n'), 'ň', 'n'), 'ò', 'o'), 'ó', 'o'), 'ô', 'o'), 'õ', 'o'), 'ö', 'o'), 'ō', 'o'), 'ő', 'o'), 'ù', 'u'), 'ú', 'u'), 'û', 'u'), 'ü', 'u'), 'ū', 'u'), 'ů', 'u'), 'ű', 'u'), 'ų', 'u'), 'ý', 'y'), 'ÿ', 'y'), 'ź', 'z'), 'ż', 'z'), 'ž', 'z'), 'ś', 's'), 'š', 's'), 'ş', 's'), 'ţ', 't'), 'ť', 't'), 'ŕ', 'r'), 'ř', 'r') AS plain
    FROM entity_names
) AS names WHERE plain <> name_norm;
