// A real frond serve (the binary at FROND_TEST_BIN) on a free port, for the
// tests: started with flags and environment, killed with SIGKILL.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";

export async function startFrond(dataDir, env = {}, ...flags) {
  const bin = process.env.FROND_TEST_BIN;
  if (!bin) throw new Error("FROND_TEST_BIN is not set: build frond (go build ./cmd/frond) and point FROND_TEST_BIN at it");
  mkdirSync(dataDir, { recursive: true });
  const childEnv = { ...process.env, FROND_CONFIG: "", ...env }; // frond ignores FROND_TEST_* variables
  const p = spawn(bin, ["serve", "--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--log-format", "json", ...flags], {
    env: childEnv,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const addr = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("frond serve did not start:\n" + log)), 60_000);
    p.stderr.setEncoding("utf8");
    p.stderr.on("data", (d) => {
      log += d;
      const m = /"msg":"frond listening".*?"addr":"([^"]+)"/.exec(log);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
    p.on("exit", () => {
      clearTimeout(t);
      reject(new Error("frond serve exited:\n" + log));
    });
  });
  p.removeAllListeners("exit");
  const tls = flags.includes("--tls-cert-file");
  return {
    url: (tls ? "https://" : "http://") + addr,
    log: () => log,
    kill: () =>
      new Promise((resolve) => {
        if (p.exitCode !== null || p.signalCode !== null) return resolve();
        p.once("exit", () => resolve());
        p.kill("SIGKILL");
      }),
  };
}
