/**
 * The host-path fixture driver as its own process (test/kit/csi-hostpath/process.ts starts it), so
 * a test can SIGKILL it as a crashed driver: `main.ts <options as JSON> <calls file>`. Every call is
 * appended to the calls file as a JSON line; `<calls file>.ready` is written once both sockets
 * serve. SIGTERM closes it as a registrar that exits does (its sockets removed). No upstream
 * counterpart (csi-driver-host-path's cmd/hostpathplugin is its model).
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { startHostPathDriver, type HostPathDriverOptions } from './driver.ts';

const [optionsJson, callsFile] = process.argv.slice(2);
if (!optionsJson || !callsFile) {
  process.stderr.write('usage: main.ts <options JSON> <calls file>\n');
  process.exit(2);
}
const options = JSON.parse(optionsJson) as HostPathDriverOptions;
const driver = await startHostPathDriver({
  ...options,
  onCall: (c) => appendFileSync(callsFile, `${JSON.stringify(c)}\n`),
});
writeFileSync(`${callsFile}.ready`, String(process.pid));
process.stdout.write(`fixture driver ${options.name} serving on ${options.csiSocket} (pid ${process.pid})\n`);
process.once('SIGTERM', () => {
  void driver.close().then(() => process.exit(0));
});
