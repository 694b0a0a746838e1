#!/usr/bin/env node
// The installed command runs the compiled bundle (`npm run build`, run by npm ci / npm install).
await import("../dist/byok.js");
