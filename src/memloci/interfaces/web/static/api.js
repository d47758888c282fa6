// The REST client: the same JSON API every other client uses, with the key from localStorage.

import { ask } from "./dom.js";

const KEY_STORAGE = "memloci.apiKey";

export class ApiError extends Error {
  constructor(status, code, message, hint) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint || "";
  }
}

let namespace = "";
let pendingKey = null; // one key prompt at a time, however many requests got a 401

export function setNamespace(ns) {
  namespace = (ns || "").trim();
}

export function getNamespace() {
  return namespace;
}

export function hasKey() {
  return Boolean(localStorage.getItem(KEY_STORAGE));
}

/** Open the key dialog; true when a new key was saved. */
export function promptForKey(reason) {
  if (pendingKey) return pendingKey;
  const dialog = document.getElementById("key-dialog");
  const input = document.getElementById("key-input");
  if (reason) document.getElementById("key-reason").textContent = reason;
  input.value = "";
  pendingKey = ask(dialog).then((answer) => {
    pendingKey = null;
    if (answer === "forget") localStorage.removeItem(KEY_STORAGE);
    if (answer !== "save" || !input.value.trim()) return false;
    localStorage.setItem(KEY_STORAGE, input.value.trim());
    return true;
  });
  return pendingKey;
}

function buildUrl(path, params) {
  const url = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(params || {})) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (v !== undefined && v !== null && v !== "") url.searchParams.append(name, String(v));
    }
  }
  if (namespace) url.searchParams.set("namespace", namespace);
  return url;
}

/**
 * Call the API; resolves to the JSON body, rejects with an ApiError carrying the
 * server's {"error": {code, message, hint}}. A 401 asks for a key and retries once.
 */
export async function api(path, { method = "GET", body, params } = {}, retried = false) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const key = localStorage.getItem(KEY_STORAGE);
  if (key) headers.Authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch(buildUrl(path, params), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "network_error", "Could not reach the memloci server.",
      "Is `memloci serve` still running?");
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.ok) return data;
  const err = (data && data.error) || {};
  if (response.status === 401 && !retried) {
    // a key saved while this request was under way (another request's prompt): use it
    const current = localStorage.getItem(KEY_STORAGE);
    if ((current && current !== key) || (await promptForKey(err.message ? `${err.message}.` : ""))) {
      return api(path, { method, body, params }, true);
    }
  }
  throw new ApiError(
    response.status,
    err.code || `http_${response.status}`,
    err.message || `${response.status} ${response.statusText}`.trim(),
    err.hint,
  );
}
