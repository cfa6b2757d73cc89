// What the gateway scripts (gateway.mjs, connect.mjs) share: the one-line verdict, steps,
// bounded waits and the wire log a failure shows.

const OVERALL_TIMEOUT_MS = 60_000;

let currentStep = 'start';

/** Prints `FAIL (step): reason` and exits 1. */
export function fail(reason) {
  console.log(`FAIL (${currentStep}): ${reason}`);
  process.exit(1);
}

/** Fails the script if it is still running after a minute. */
export function limitRun() {
  setTimeout(() => fail(`timed out after ${OVERALL_TIMEOUT_MS / 1000} s`), OVERALL_TIMEOUT_MS).unref();
}

/** Runs `body` as the step `name`, which a failure names. */
export async function step(name, body) {
  currentStep = name;
  return await body();
}

export function check(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

export function same(actual, expected) {
  return JSON.stringify(actual) === JSON.stringify(expected);
}

/** Resolves with `promise`, or rejects after `ms` with `what` in the message. */
export function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The first text of a tool result. */
export function text(result) {
  return result?.content?.[0]?.text;
}

/** The message of `error` and of its cause. */
export function describe(error) {
  const cause = error?.cause ? ` (${error.cause.message ?? error.cause})` : '';
  return `${error?.message ?? error}${cause}`;
}

/** A `fetch` that records `POST tools/call echo -> 200 text/event-stream` for each exchange. */
export function recordingFetch(log) {
  return async (url, init = {}) => {
    const method = init.method ?? 'GET';
    let what = method;
    if (method === 'POST' && typeof init.body === 'string') {
      try {
        const message = JSON.parse(init.body);
        what = `POST ${message.method ?? 'response'}${message.params?.name ? ` ${message.params.name}` : ''}`;
      } catch {
        // Not JSON: the exchange is still worth recording.
      }
    }
    const entry = { what, status: undefined, type: undefined };
    log.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    entry.type = response.headers.get('content-type')?.split(';')[0];
    return response;
  };
}

export function showLog(log) {
  return log.map(e => `${e.what} -> ${e.status ?? '...'}${e.type ? ` ${e.type}` : ''}`).join('; ');
}

/** Runs `scenario()`, prints `ok: NAME: what it returned` or the failure and the wire log. */
export async function verdict(name, scenario, log = []) {
  limitRun();
  try {
    const what = await scenario();
    console.log(`ok: ${name}: ${what}`);
    process.exit(0);
  } catch (error) {
    const wire = log.length ? `\n  wire: ${showLog(log)}` : '';
    fail(`${describe(error)}${wire}`);
  }
}
