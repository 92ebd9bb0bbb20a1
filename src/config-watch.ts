// --watch-config: calls back when the config file changes. The folder is
// watched, not the file, because editors and config-map updates (Kubernetes
// swaps a symlink) replace the file rather than write into it, and a watch on
// the old file would go quiet. Bursts of events (a save is often several) are
// folded into one call after a short settle time.
import { watch, type FSWatcher } from "node:fs";
import path from "node:path";

const SETTLE_MS = 200;

export interface ConfigWatch {
  close(): void;
}

export function watchConfigFile(file: string, onChange: () => void, onError: (err: Error) => void): ConfigWatch {
  const dir = path.dirname(path.resolve(file));
  const name = path.basename(file);
  let timer: NodeJS.Timeout | undefined;
  const watcher: FSWatcher = watch(dir, { persistent: false }, (_event, changed) => {
    // Some platforms do not say which file changed; then any change in the folder counts.
    if (changed !== null && changed !== name && !String(changed).startsWith("..")) return;
    clearTimeout(timer);
    timer = setTimeout(onChange, SETTLE_MS);
    timer.unref();
  });
  watcher.on("error", onError);
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
