// Reading the upstream's challenge (RFC 9728 §5.1): where its protected resource metadata is.
import { describe, expect, it } from "vitest";
import { resourceMetadataOf } from "../../src/credentials/consent/authority.js";

describe("resourceMetadataOf", () => {
  it("reads resource_metadata, quoted or not, among other parameters", () => {
    expect(
      resourceMetadataOf('Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource"'),
    ).toBe("https://a.example/.well-known/oauth-protected-resource");
    expect(resourceMetadataOf('Bearer realm="x", error="invalid_token", resource_metadata=https://b.example/m')).toBe(
      "https://b.example/m",
    );
  });

  it("finds none in a challenge without it, or without a challenge", () => {
    expect(resourceMetadataOf('Bearer realm="x"')).toBeUndefined();
    expect(resourceMetadataOf(null)).toBeUndefined();
    // Another parameter whose name ends the same is not it.
    expect(resourceMetadataOf('Bearer xresource_metadata="https://c.example"')).toBeUndefined();
  });
});
