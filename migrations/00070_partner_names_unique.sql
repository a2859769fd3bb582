-- +goose Up

-- Partner names are unique, ignoring case (issue 23): the back office
-- filters and lists partners by name, and two "Demo Partner"s cannot be
-- told apart. Existing duplicates (a development database where the demo
-- partner was created twice) keep the oldest partner's name; each later
-- one gets " (2)", " (3)"... appended, so the index can be built on any
-- database. The service answers a taken name as a field error on "name".
UPDATE partners p
   SET name = left(p.name, 190) || ' (' || d.n || ')'
  FROM (SELECT id, row_number() OVER (PARTITION BY lower(name) ORDER BY created_at, id) AS n
          FROM partners) d
 WHERE d.id = p.id AND d.n > 1;

CREATE UNIQUE INDEX partners_name_lower_key ON partners (lower(name));

-- +goose Down
DROP INDEX partners_name_lower_key;
