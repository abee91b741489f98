// A client for `memoryclaw serve --stdio`: one long-lived child process, JSON lines each way.
//
// The child starts on the first request, not at plugin registration (OpenClaw registers a
// plugin several times per process).  If it dies, pending requests fail with its exit status
// and the last lines it wrote to stderr, and the next request starts a new one; a child that
// dies again within `restartDelayMs` is not restarted until that delay has passed, so a broken
// command fails fast instead of spawning in a loop.
//
// A child's first request is its start check: it may take `startTimeoutMs` (a cold Python
// start and the vault's first open take seconds on a loaded machine), while requests to a
// child that has answered keep their own, shorter timeouts.  A child that never answers its
// first request is reported once through `onStartFailure`.  Every failure carries a
// `reason`: "timeout", "not running" (could not start, or died) or "error" (an error answer).

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** JSON.stringify replacer: half of an emoji cut by a clip is replaced by U+FFFD, since the
 * server refuses text that is not valid Unicode and the turn would be lost. */
function wellFormed(_key, value) {
  return typeof value === "string" ? value.toWellFormed() : value;
}

const STDERR_TAIL_CHARS = 2000;
const CLOSED = "memoryclaw bridge closed";

function failure(message, reason) {
  const err = new Error(message);
  err.reason = reason;
  return err;
}

export class MemoryclawBridge {
  /**
   * @param {{command: string, args: string[], env?: Record<string, string>,
   *          restartDelayMs?: number, startTimeoutMs?: number,
   *          onStderr?: (line: string) => void, onStartFailure?: (message: string) => void}} options
   */
  constructor(options) {
    this.command = options.command;
    this.args = options.args;
    this.env = options.env;
    this.restartDelayMs = options.restartDelayMs ?? 1000;
    this.startTimeoutMs = options.startTimeoutMs ?? 0;
    this.onStderr = options.onStderr ?? (() => {});
    this.onStartFailure = options.onStartFailure ?? (() => {});
    this.answered = false; // whether the running child has answered a request yet
    this.startReported = null; // the child whose failed start was reported
    this.child = null;
    this.pending = new Map();
    this.nextId = 1;
    this.stderrTail = "";
    this.lastFailure = null; // {at, message} of the last child that died or failed to start
    this.starts = 0;
  }

  /** The child's pid, or null when none runs. */
  get pid() {
    return this.child?.pid ?? null;
  }

  _start() {
    if (this.child) return this.child;
    if (this.lastFailure && Date.now() - this.lastFailure.at < this.restartDelayMs) {
      throw failure(this.lastFailure.message, "not running");
    }
    this.stderrTail = "";
    this.answered = false;
    this.starts += 1;
    const child = spawn(this.command, this.args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: this.env ?? process.env,
      windowsHide: true,
    });
    this.child = child;
    // One-shot `openclaw agent` runs must be able to exit while the server idles.
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream.unref?.();
    child.stdin.on("error", () => {}); // EPIPE after a crash surfaces as the exit below
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
      for (const line of chunk.split("\n")) if (line.trim()) this.onStderr(line);
    });
    createInterface({ input: child.stdout, crlfDelay: Infinity }).on("line", (line) =>
      this._answer(line),
    );
    child.on("error", (err) => this._gone(child, `cannot start memoryclaw (${this.command}): ${err.message}`));
    child.on("exit", (code, signal) => {
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      const tail = this.stderrTail.trim().split("\n").slice(-3).join(" | ");
      this._gone(child, `memoryclaw server stopped (${how})${tail ? `: ${tail}` : ""}`);
    });
    return child;
  }

  _gone(child, message) {
    if (this.child !== child) return;
    this.child = null;
    this.lastFailure = { at: Date.now(), message };
    // one report per child that never answered (a timeout may have reported it already)
    if (!this.answered && message !== CLOSED && this.startReported !== child) {
      this.startReported = child;
      this.onStartFailure(message);
    }
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(failure(message, "not running"));
    }
    this.pending.clear();
  }

  _answer(line) {
    let response;
    try {
      response = JSON.parse(line);
    } catch {
      return; // not ours: the server only writes JSON lines to stdout
    }
    const waiter = this.pending.get(response?.id);
    this.answered = true;
    if (!waiter) return; // answered after its timeout
    this.pending.delete(response.id);
    clearTimeout(waiter.timer);
    if (response.error) {
      const err = failure(response.error.message ?? "memoryclaw error", "error");
      err.code = response.error.code;
      waiter.reject(err);
    } else {
      this.lastFailure = null;
      waiter.resolve(response.result);
    }
  }

  /**
   * Send one request; resolves with its result, rejects on an error response, a dead server
   * or after `timeoutMs` (at least `startTimeoutMs` until the child has answered once).
   */
  request(method, params = {}, timeoutMs = 2000) {
    return new Promise((resolve, reject) => {
      let child;
      try {
        child = this._start();
      } catch (err) {
        reject(err);
        return;
      }
      const id = this.nextId++;
      const starting = !this.answered;
      const wait = starting ? Math.max(timeoutMs, this.startTimeoutMs) : timeoutMs;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        const what = starting ? `memoryclaw ${method} (its server starting)` : `memoryclaw ${method}`;
        const message = `${what} timed out after ${wait} ms`;
        if (starting && this.child === child && !this.answered && this.startReported !== child) {
          this.startReported = child;
          this.onStartFailure(`${message} (command: ${this.command})`);
        }
        reject(failure(message, "timeout"));
      }, wait);
      this.pending.set(id, { resolve, reject, timer });
      child.stdin.write(`${JSON.stringify({ id, method, params }, wellFormed)}\n`);
    });
  }

  /** Stop the child (it exits at end of input) and fail what is still pending. */
  close() {
    const child = this.child;
    if (!child) return;
    this._gone(child, CLOSED);
    this.lastFailure = null;
    child.stdin.end();
    setTimeout(() => child.kill(), 2000).unref();
  }
}
