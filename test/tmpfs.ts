/**
 * A small tmpfs mounted for one test, to fill a disk for real: `mount -t tmpfs -o size=…`, which
 * needs root (CI runs as root). Where it cannot be mounted, `mountTmpfs` says why, and the test
 * skips with that reason printed.
 */

import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Tmpfs {
  /** The mount point. */
  dir: string;
  /** Fills the file system with a file of zeros until no byte is left. @returns its size */
  fill(): number;
  /** Removes the filling file: the space is back. */
  unfill(): void;
  /** Unmounts (lazily when it is still busy) and removes the mount point; safe to call twice. */
  unmount(): void;
}

const FILLER = ".filler";

/**
 * Mounts a tmpfs of `sizeMiB` MiB on a new folder under the system's temporary folder.
 * @returns the mount, or the reason it cannot be mounted here (not root, no mount command, …)
 */
export function mountTmpfs(sizeMiB: number): Tmpfs | { skip: string } {
  if (process.platform !== "linux") return { skip: "tmpfs mounts need Linux" };
  if (process.getuid?.() !== 0) return { skip: "mounting a tmpfs needs root" };
  const dir = mkdtempSync(join(tmpdir(), "ledger-tmpfs-"));
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMiB}m`, "tmpfs", dir], {
    encoding: "utf8",
  });
  if (mounted.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    const why = mounted.error?.message ?? mounted.stderr.trim();
    return { skip: `mount -t tmpfs failed: ${why}` };
  }
  let isMounted = true;
  return {
    dir,
    fill: () => {
      const fd = openSync(join(dir, FILLER), "a");
      const chunk = Buffer.alloc(1024 * 1024);
      let written = 0;
      try {
        for (let piece = chunk; piece.length > 0; ) {
          try {
            written += writeSync(fd, piece);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
            // The last bytes: smaller pieces until not even one fits.
            piece = piece.subarray(0, Math.floor(piece.length / 2));
          }
        }
      } finally {
        closeSync(fd);
      }
      return written;
    },
    unfill: () => rmSync(join(dir, FILLER), { force: true }),
    unmount: () => {
      if (!isMounted) return;
      let result = spawnSync("umount", [dir], { encoding: "utf8" });
      for (let attempt = 0; result.status !== 0 && attempt < 10; attempt++) {
        spawnSync("sleep", ["0.2"]);
        result = spawnSync("umount", [dir], { encoding: "utf8" });
      }
      if (result.status !== 0) spawnSync("umount", ["-l", dir]);
      isMounted = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
