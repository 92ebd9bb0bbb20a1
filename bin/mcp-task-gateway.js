#!/usr/bin/env node
// Installed entry point: runs the compiled CLI (npm run build / prepare writes dist/).
await import("../dist/main.js");
