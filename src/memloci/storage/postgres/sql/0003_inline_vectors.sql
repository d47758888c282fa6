-- memloci PostgreSQL schema v3: vectors stored inline.
-- Vectors stay inside the row (compressed inline if need be, moved out only as a last
-- resort) instead of pgvector's default EXTERNAL storage, which sends every vector of a
-- turn with some context to the TOAST table: an exact scan over one user's rows then
-- paid an extra index lookup per row (35 ms for 2,000 rows at 100k turns). New rows only.
ALTER TABLE nodes ALTER COLUMN embedding SET STORAGE MAIN;
