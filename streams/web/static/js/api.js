// JSON over the worker's HTTP API. A 401 asks the reader for the token once; it is kept in
// sessionStorage (this tab only, gone when it closes: transcripts are personal data).

const TOKEN_KEY = "callqa.token";
let asking = null; // one dialog for all the requests that met a 401 at the same time
let given = null; // resolves once a token is given (the live feed waits for it)
let giveToken = null;

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

// Resolves when the reader has given a token (at once if one is kept already).
export function tokenGiven() {
  if (token()) return Promise.resolve();
  if (!given) given = new Promise((resolve) => { giveToken = resolve; });
  return given;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function getJson(path) {
  return request("GET", path);
}

export async function postJson(path, body) {
  return request("POST", path, body);
}

async function request(method, path, body) {
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: "application/json" };
    if (token()) headers.Authorization = `Bearer ${token()}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 401 && attempt < 3) {
      await askToken(Boolean(token()));
      continue;
    }
    const text = await response.text();
    let document = null;
    try { document = text ? JSON.parse(text) : null; } catch { document = null; }
    if (!response.ok) {
      const message = (document && document.error) || `${response.status} ${response.statusText}`;
      throw new ApiError(response.status, message);
    }
    return document;
  }
}

function askToken(refused) {
  if (!asking) {
    asking = new Promise((resolve) => {
      const dialog = document.getElementById("token-dialog");
      const input = document.getElementById("token-input");
      document.getElementById("token-error").hidden = !refused;
      input.value = "";
      dialog.addEventListener("close", () => {
        sessionStorage.setItem(TOKEN_KEY, input.value.trim());
        asking = null;
        if (token() && giveToken) giveToken();
        resolve();
      }, { once: true });
      dialog.showModal();
    });
  }
  return asking;
}
