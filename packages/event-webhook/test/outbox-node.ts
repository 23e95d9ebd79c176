/**
 * One server process for the outbox tests' `kill -9` case: started with `node --import tsx`, configured by the
 * environment the test gives it, prints `{"url": …}` once listening, and runs until it is killed.
 */
import pino from 'pino';
import { createServer, loadConfig } from '../../server/src/index.js';

const config = loadConfig({ env: process.env });
const server = await createServer(config, { logger: pino({ level: 'silent' }), env: process.env });
const url = await server.listen();
process.stdout.write(`${JSON.stringify({ url })}\n`);
