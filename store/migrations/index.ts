import type { Knex } from "knex";
import * as initial from "./0001_initial.js";
import * as aep from "./0002_aep.js";
import * as usage from "./0003_usage.js";

// Migrations are imported statically so that running them depends on neither the cwd nor file extensions.
// Append new ones at the end; a name, once shipped, never changes (it is recorded in knex_migrations).
const MIGRATIONS: ReadonlyArray<readonly [name: string, migration: Knex.Migration]> = [
  ["0001_initial", initial],
  ["0002_aep", aep],
  ["0003_usage", usage],
];

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => MIGRATIONS.map(([name]) => name),
  getMigrationName: (name) => name,
  getMigration: async (name) => {
    const found = MIGRATIONS.find(([n]) => n === name);
    if (!found) throw new Error(`unknown migration ${name}; known: ${MIGRATIONS.map(([n]) => n).join(", ")}`);
    return found[1];
  },
};
