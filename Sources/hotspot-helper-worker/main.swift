import LuaSandbox
import ScriptLibraries

// The worker process that runs venue scripts, with the libraries they may call.
SandboxWorker.run(modules: ScriptLibraries.modules)
