import HTTPTypes

/// The page, its script and its style: static, no build step. The script builds every piece
/// of the view with `textContent` and properties, never markup, so what a helper or a
/// portal says shows as text.
enum PageAssets {
    /// On every response: only the page's own script, style and requests; no framing; no
    /// Referer (the address holds the token).
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
            + "form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        .cacheControl: "no-store",
        HTTPField.Name("X-Frame-Options")!: "DENY",
    ]

    /// The page, carrying `csrfToken` (hex) for the script to send with every change.
    static func page(csrfToken: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="csrf-token" content="\(csrfToken)">
        <title>hotspot-helper</title>
        <link rel="stylesheet" href="/style.css">
        <script src="/app.js" defer></script>
        </head>
        <body>
        <header><h1>hotspot-helper</h1><p id="daemon" data-connected="false">Connecting to the daemon…</p></header>
        <main>
        <section id="networks" aria-label="Networks"></section>
        <section aria-labelledby="helpers-title"><h2 id="helpers-title">Helpers</h2><ul id="helpers"></ul></section>
        <section aria-labelledby="events-title"><h2 id="events-title">What happens</h2><ol id="events" reversed></ol></section>
        </main>
        </body>
        </html>
        """
    }

    static let style = """
        :root { font-family: system-ui, sans-serif; color: #1d2433; background: #f4f6fa; }
        body { margin: 0 auto; max-width: 56rem; padding: 1rem; }
        header { display: flex; align-items: baseline; gap: 1rem; }
        h1 { font-size: 1.4rem; margin: 0.5rem 0; }
        #daemon { color: #8a4b00; margin: 0; }
        #daemon[data-connected="true"] { color: #23683a; }
        .network { background: #fff; border-radius: 0.6rem; padding: 1rem 1.2rem; margin: 1rem 0; box-shadow: 0 1px 3px #0002; }
        .network h2 { margin: 0 0 0.4rem; font-size: 1.2rem; }
        .state { display: inline-block; padding: 0.1rem 0.6rem; border-radius: 1rem; background: #dde3ee; font-size: 0.9rem; }
        .state[data-state="authenticated"] { background: #cdebd5; }
        .state[data-state="presenting_ui"] { background: #ffe7b3; }
        .state[data-state="failure"] { background: #f7c9c9; }
        .questions { border: 1px solid #e0b85c; border-radius: 0.5rem; padding: 0.8rem 1rem; margin: 0.8rem 0; background: #fffaf0; }
        .questions h3 { margin: 0 0 0.3rem; font-size: 1.05rem; }
        .questions label { display: block; margin: 0.6rem 0 0.2rem; font-weight: 600; }
        .questions label.checkbox { font-weight: normal; }
        .questions input[type=text], .questions input[type=email], .questions input[type=number],
        .questions input[type=password], .questions select { width: 100%; max-width: 24rem; padding: 0.35rem; }
        button { margin: 0.6rem 0.4rem 0 0; padding: 0.35rem 0.9rem; border-radius: 0.4rem; border: 1px solid #8791a5; background: #fff; cursor: pointer; }
        button.primary { background: #2a5bd7; border-color: #2a5bd7; color: #fff; }
        .outcome { margin: 0.5rem 0 0; font-weight: 600; }
        .outcome[data-ok="false"] { color: #a11d1d; }
        .outcome[data-ok="true"] { color: #23683a; }
        table { border-collapse: collapse; margin-top: 0.6rem; font-size: 0.9rem; }
        td, th { padding: 0.15rem 0.6rem 0.15rem 0; text-align: left; }
        #events { font-family: ui-monospace, monospace; font-size: 0.8rem; max-height: 16rem; overflow: auto; background: #fff; padding: 0.6rem 2rem; border-radius: 0.6rem; }
        """

    static let script = #"""
        "use strict";
        // Built with textContent and properties only: what helpers and portals say is text.
        const csrfToken = document.querySelector('meta[name="csrf-token"]').content;
        if (location.search) history.replaceState(null, "", "/");  // the token leaves the address bar

        const forms = new Map();     // network -> { key, element }: kept while the person types
        const outcomes = new Map();  // network -> { ok, message }

        function make(tag, properties = {}, ...children) {
          const element = document.createElement(tag);
          for (const [name, value] of Object.entries(properties)) {
            if (name.startsWith("data-")) element.setAttribute(name, value);
            else element[name] = value;
          }
          for (const child of children) if (child !== null && child !== undefined) element.append(child);
          return element;
        }

        async function send(request) {
          const response = await fetch("/api/control", {
            method: "POST",
            headers: { "Content-Type": "application/json", "X-CSRF-Token": csrfToken },
            body: JSON.stringify(request),
          });
          if (!response.ok) return { ok: false, message: (await response.text()).trim() };
          return response.json();
        }

        async function act(network, request) {
          const reply = await send(request);
          outcomes.set(network, { ok: reply.ok, message: reply.message });
          await refresh();
        }

        function questionsForm(network, questions) {
          const key = JSON.stringify(questions);
          const kept = forms.get(network);
          if (kept && kept.key === key) return kept.element;
          const form = make("form", { className: "questions", noValidate: true, "data-questions": network });
          form.append(make("h3", { textContent: questions.title }));
          if (questions.message) form.append(make("p", { textContent: questions.message }));
          for (const field of questions.fields) {
            const id = `field-${network}-${field.name}`;
            if (field.kind === "checkbox") {
              const box = make("input", { type: "checkbox", id, name: field.name });
              form.append(make("label", { className: "checkbox", htmlFor: id }, box, " " + field.label));
              continue;
            }
            form.append(make("label", { htmlFor: id, textContent: field.label + (field.required ? "" : " (optional)") }));
            if (field.kind === "choice") {
              const select = make("select", { id, name: field.name });
              select.append(make("option", { value: "", textContent: "—" }));
              for (const option of field.options) select.append(make("option", { value: option.value, textContent: option.label }));
              form.append(select);
            } else {
              const type = { email: "email", number: "number", password: "password" }[field.kind] || "text";
              form.append(make("input", { type, id, name: field.name, autocomplete: field.kind === "email" ? "email" : "off" }));
            }
          }
          form.append(make("button", { type: "submit", className: "primary", textContent: "Send" }));
          form.addEventListener("submit", event => {
            event.preventDefault();
            const answers = {};
            for (const field of questions.fields) {
              const input = form.elements.namedItem(field.name);
              answers[field.name] = field.kind === "checkbox" ? String(input.checked) : input.value;
            }
            outcomes.set(network, { ok: true, message: "Sending…" });
            render(lastStatus);
            act(network, { command: "ui", network, answers });
          });
          forms.set(network, { key, element: form });
          return form;
        }

        function commandsTable(commands) {
          if (!commands.length) return null;
          const table = make("table", {}, make("tr", {}, ...["Command", "Helper", "Result", "Time", ""].map(text => make("th", { textContent: text }))));
          for (const command of commands) {
            table.append(make("tr", {},
              make("td", { textContent: command.command }), make("td", { textContent: command.helper }),
              make("td", { textContent: command.result }), make("td", { textContent: Math.round(command.milliseconds) + " ms" }),
              make("td", { textContent: command.error || "" })));
          }
          return table;
        }

        function portalLink(url) {
          try {
            const parsed = new URL(url);
            if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return null;
          } catch { return null; }
          return make("p", {}, "No helper logs in here: ", make("a", { href: url, target: "_blank", rel: "noopener noreferrer", textContent: "open the portal" }));
        }

        let lastStatus = null;

        function render(status) {
          if (!status) return;
          const networks = document.getElementById("networks");
          const cards = status.networks.map(network => {
            const card = make("article", { className: "network", "data-network": network.ssid, "data-state": network.state });
            card.append(make("h2", { textContent: network.ssid }));
            const state = make("span", { className: "state", "data-state": network.state, textContent: network.state.replace("_", " ") });
            // The helper by its display name (the gateway family, for a family helper) and id.
            const chosen = status.helpers.find(helper => helper.id === network.helper);
            const by = chosen ? `${chosen.displayName} (${network.helper})` : network.helper;
            card.append(make("p", {}, state, network.helper ? ` with ${by}` : "", network.interface ? ` on ${network.interface}` : ""));
            if (network.retryInSeconds != null) {
              const wait = network.retryInSeconds < 60 ? `${network.retryInSeconds} s` : `${Math.round(network.retryInSeconds / 60)} min`;
              card.append(make("p", { className: "retry", textContent: (network.autoJoinDisabled ? "A helper failed here. " : "")
                + `Tried again by itself in ${wait}; "Join again" tries now.` }));
            }
            if (network.connectivity) card.append(make("p", { textContent: "Connectivity: " + network.connectivity }));
            if (network.connectivity === "captive" && !network.helper && network.portalURL) card.append(portalLink(network.portalURL));
            if (network.questions) card.append(questionsForm(network.ssid, network.questions)); else forms.delete(network.ssid);
            const outcome = outcomes.get(network.ssid);
            if (outcome) card.append(make("p", { className: "outcome", "data-ok": String(outcome.ok), textContent: outcome.message }));
            const actions = make("p");
            if (network.state === "authenticated" || network.state === "presenting_ui") {
              actions.append(make("button", { type: "button", textContent: "Log off", onclick: () => act(network.ssid, { command: "logoff", network: network.ssid }) }));
            }
            actions.append(make("button", { type: "button", textContent: network.autoJoinDisabled ? "Join again now (a helper failed)" : "Join again",
                                            onclick: () => act(network.ssid, { command: "join", network: network.ssid }) }));
            if (chosen && !chosen.switchedOff && !chosen.offFor.includes(network.ssid)) {
              actions.append(make("button", { type: "button", textContent: `Switch ${network.helper} off here`,
                onclick: () => act(network.ssid, { command: "disable", helper: network.helper, network: network.ssid }) }));
            }
            card.append(actions, commandsTable(network.recentCommands));
            return card;
          });
          networks.replaceChildren(...cards);
          const helpers = document.getElementById("helpers");
          helpers.replaceChildren(...status.helpers.map(helper => {
            const off = helper.switchedOff;
            const item = make("li", { "data-helper": helper.id }, `${helper.displayName} (${helper.id})` + (off ? ": switched off" : "")
              + (helper.offFor.length ? `: off for ${helper.offFor.join(", ")}` : ""));
            item.append(" ", make("button", { type: "button", textContent: off ? "Switch on" : "Switch off",
              onclick: () => act("", { command: off ? "enable" : "disable", helper: helper.id }) }));
            for (const network of helper.offFor) {
              item.append(" ", make("button", { type: "button", textContent: `Switch on for ${network}`,
                onclick: () => act(network, { command: "enable", helper: helper.id, network }) }));
            }
            return item;
          }));
        }

        async function refresh() {
          try {
            const reply = await (await fetch("/api/status")).json();
            const daemon = document.getElementById("daemon");
            daemon.dataset.connected = String(reply.ok);
            daemon.textContent = reply.ok ? "Connected to the daemon." : reply.message;
            if (reply.ok) { lastStatus = reply.status; render(lastStatus); }
          } catch (error) {
            document.getElementById("daemon").textContent = "The page cannot reach its server: " + error;
          }
        }

        let refreshing = null;
        function refreshSoon() {
          if (refreshing) return;
          refreshing = setTimeout(() => { refreshing = null; refresh(); }, 30);
        }

        function describe(event) {
          const parts = [event.event];
          for (const key of ["network", "command", "helper", "result", "verdict", "to", "level", "message", "error"]) {
            if (event[key] !== undefined && event[key] !== null) parts.push(key === "to" ? "→ " + event[key] : String(event[key]));
          }
          return parts.join(" ");
        }

        const stream = new EventSource("/api/events");
        stream.onmessage = message => {
          const event = JSON.parse(message.data);
          const list = document.getElementById("events");
          list.prepend(make("li", { textContent: describe(event) }));
          while (list.children.length > 100) list.lastChild.remove();
          refreshSoon();
        };
        refresh();
        """#
}
