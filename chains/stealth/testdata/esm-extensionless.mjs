// Node resolve hook: @scopelift/stealth-address-sdk 0.2.2 ships ESM built for
// bun, with extensionless relative imports ('./types') and directory imports
// ('./utils/crypto') that Node's ESM resolver refuses. This hook retries a
// failed relative specifier with '.js' and '/index.js'. It changes nothing
// else: the SDK's code runs as published.
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (!specifier.startsWith('.')) throw err;
    for (const suffix of ['.js', '/index.js']) {
      try {
        return await next(specifier + suffix, context);
      } catch {
        // try the next suffix
      }
    }
    throw err;
  }
}
