// New results without a reload: the worker's server-sent events (`GET /events/results`), read with
// fetch() so the token can go in a header (EventSource cannot send one). Where the stream is not
// served or breaks, short polling of `GET /calls?limit=20` takes over.

import { token, tokenGiven } from "./api.js";

const POLL_MS = 5000;
const RETRY_MS = 5000;
const listeners = new Set();
let statusEl = null;

export function onResult(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function startLive(el) {
  statusEl = el;
  stream();
}

function emit(row) {
  for (const listener of listeners) listener(row);
}

function status(text, kind) {
  if (!statusEl) return;
  statusEl.textContent = text;
  statusEl.className = `live-status ${kind}`;
}

async function stream() {
  try {
    const headers = { Accept: "text/event-stream" };
    if (token()) headers.Authorization = `Bearer ${token()}`;
    const response = await fetch("/events/results", { headers });
    if (response.status === 401 && !token()) {
      // The page asks for the token (its first read met the same 401); follow once it is given.
      status("waiting for the token", "off");
      await tokenGiven();
      return stream();
    }
    if (!response.ok || !response.body) throw new Error(`${response.status}`);
    status("live", "on");
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        handleMessage(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
      }
    }
    throw new Error("stream ended");
  } catch {
    poll();
  }
}

function handleMessage(block) {
  let event = "message", data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  if (event !== "result" || !data) return;
  try { emit(JSON.parse(data)); } catch { /* a malformed message is skipped */ }
}

// Polling: what is new since the last look (call id + version), newest first as /calls lists it.
const seen = new Set();
let primed = false;

async function poll() {
  status("polling", "poll");
  for (;;) {
    try {
      const headers = { Accept: "application/json" };
      if (token()) headers.Authorization = `Bearer ${token()}`;
      const response = await fetch("/calls?limit=20", { headers });
      if (response.ok) {
        const { calls } = await response.json();
        for (const row of calls.slice().reverse()) {
          const key = `${row.call_id}@${row.version}`;
          if (!seen.has(key) && primed) emit(row);
          seen.add(key);
        }
        primed = true;
        status("live (polling)", "poll");
      } else {
        status(`offline (${response.status})`, "off");
      }
    } catch {
      status("offline", "off");
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (!primed) await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}
