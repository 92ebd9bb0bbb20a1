// The test authorization server's two pages (test/helpers/oauth-server.ts): a login form where any
// username signs in, and a consent page with Allow and Deny. Plain HTML forms, no script, so a browser
// (test/helpers/consent-browser.ts) clicks through them as a user would. Every value is escaped.

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

const page = (title: string, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>` +
  `<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;

export function renderLogin(uid: string, clientId: string, problem?: string): string {
  const action = `/interaction/${encodeURIComponent(uid)}/login`;
  return page(
    "Sign in",
    `<p>to continue to <strong id="client">${escapeHtml(clientId)}</strong></p>` +
      (problem === undefined ? "" : `<p role="alert">${escapeHtml(problem)}</p>`) +
      `<form method="post" action="${action}">` +
      `<label>Username <input name="username" id="username" autocomplete="username" autofocus></label>` +
      `<button type="submit" id="sign-in">Sign in</button></form>`,
  );
}

export function renderConsent(uid: string, clientId: string, scope: string, resource: unknown): string {
  const base = `/interaction/${encodeURIComponent(uid)}`;
  const resources = [resource].flat().filter((r): r is string => typeof r === "string");
  return page(
    "Authorize access",
    `<p><strong id="client">${escapeHtml(clientId)}</strong> asks for <span id="scope">${escapeHtml(scope)}</span>` +
      (resources.length === 0 ? "" : ` on <span id="resource">${escapeHtml(resources.join(" "))}</span>`) +
      `.</p><form method="post" action="${base}/confirm"><button type="submit" id="allow">Allow</button></form>` +
      `<form method="post" action="${base}/abort"><button type="submit" id="deny">Deny</button></form>`,
  );
}
