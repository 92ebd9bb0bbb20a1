// A user clicking through the test authorization server's login and consent pages
// (test/helpers/oauth-server.ts) in Debian's Chromium, driven by playwright-core.
//
//   const browser = await launchChromium();
//   const landed = await consentInBrowser(browser, consentLink, { username: "alice", landsOn: redirectUri });
//   landed.url.searchParams.get("code"), landed.text        // where the authorization server sent the browser
//   await browser.close();
//
// Each call uses a fresh browser context (no cookies), so every user signs in anew. `landsOn` is the
// prefix of the URL the flow ends on (the client's redirect_uri, or a gateway's callback): it must be
// served by something, since the browser loads it and `text` is that page's body.
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does)`);
  // --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}

export interface ConsentOptions {
  /** Typed into the login form; becomes the token's `sub`. */
  username: string;
  /** The flow ends once the browser loads a URL starting with this. */
  landsOn: string;
  /** Clicks Deny instead of Allow. */
  deny?: boolean;
}

export interface Landed {
  /** The URL the browser landed on (code, state and iss, or error, in its query). */
  url: URL;
  /** The landing page's body text. */
  text: string;
  /** Whether the login form was shown (false when the browser already had a session). */
  signedIn: boolean;
}

/** Opens `startUrl`, signs in as `username`, allows (or denies) and returns where the browser landed. */
export async function consentInBrowser(browser: Browser, startUrl: string, opts: ConsentOptions): Promise<Landed> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const landed = (u: URL): boolean => u.href.startsWith(opts.landsOn);
    await page.goto(startUrl);
    let signedIn = false;
    if (!landed(new URL(page.url())) && (await page.locator("#username").count()) > 0) {
      await page.fill("#username", opts.username);
      await page.click("#sign-in");
      signedIn = true;
      // The click waits for the navigation it starts (through the redirects) to commit.
      await page.waitForLoadState("load");
    }
    if (!landed(new URL(page.url()))) {
      await page.click(opts.deny ? "#deny" : "#allow");
      await page.waitForURL(landed);
    }
    await page.waitForLoadState("load");
    return { url: new URL(page.url()), text: await page.locator("body").innerText(), signedIn };
  } finally {
    await context.close();
  }
}
