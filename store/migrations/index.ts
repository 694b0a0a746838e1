import type { Knex } from "knex";
import * as initial from "./0001_initial.js";
import * as aep from "./0002_aep.js";
import * as aepOwner from "./0003_aep_owner.js";
import * as aepEvents from "./0004_aep_events.js";
import * as inputAnchors from "./20261203133100_input_anchors.js";
import * as conversationRoutes from "./20261203134500_conversation_routes.js";
import * as usage from "./20261203143000_usage.js";

// Migrations are imported statically so that running them depends on neither the cwd nor file extensions.
// Append new ones at the end; a name, once shipped, never changes (it is recorded in knex_migrations).
const MIGRATIONS: ReadonlyArray<readonly [name: string, migration: Knex.Migration]> = [
  ["0001_initial", initial],
  ["0002_aep", aep],
  ["0003_aep_owner", aepOwner],
  ["0004_aep_events", aepEvents],
  ["20261203133100_input_anchors", inputAnchors],
  ["20261203134500_conversation_routes", conversationRoutes],
  ["20261203143000_usage", usage],
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
