import LuaSandbox

// The engine's worker process with the standard sandbox and no extra host modules.
SandboxWorker.run(modules: [])
