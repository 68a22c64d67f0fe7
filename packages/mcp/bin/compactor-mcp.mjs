#!/usr/bin/env node
// `compactor-mcp`: Compactor's MCP server over stdio, for agents that start it as a command.
// TypeScript runs from source (no build step), through tsx's loader.
import { register } from 'tsx/esm/api';

register();
const { runStdioServer } = await import('../src/stdio.ts');
const exitCode = await runStdioServer(process.env);
if (exitCode !== null) process.exit(exitCode);
