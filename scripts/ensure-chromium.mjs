// Browser tests drive Debian's Chromium; install it when missing so `npm test` works on a fresh machine.
import { existsSync } from 'node:fs';
import { execSync } from 'node:child_process';

const chromium = process.env.REALMGATE_CHROMIUM_PATH ?? '/usr/bin/chromium';
if (!existsSync(chromium)) {
  console.log(`Chromium not found at ${chromium}; installing Debian's chromium package…`);
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  execSync(`${sudo}apt-get update -qq && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium`, {
    stdio: 'inherit',
  });
}
