// The form of a hook's ask, by the console's rules (console/ask.go): one field per property
// of the object schema, sorted by name; a boolean is a checkbox, an enum a select, a number
// or an integer a number input, anything else text; required as the schema says; the title
// defaults to the name. A hook without a schema gets one JSON payload box.

// declinePayload is what Decline sends: what an MCP client's declined elicitation sends
// (SPEC §5, Asking the person), so a workflow reads both alike.
export const declinePayload = { declined: true, action: "decline" };

// hookOf is the hook a waiting run waits on, {token, message, schema}, from either shape of
// waitingOn.hook: the token alone, or the object with the evaluated ask.
export function hookOf(env) {
  const h = env?.status === "waiting" ? env.waitingOn?.hook : undefined;
  if (typeof h === "string" && h) return { token: h };
  if (h && typeof h === "object" && typeof h.token === "string") return { token: h.token, message: h.message, schema: h.schema };
  return null;
}

// askFields are the form's fields for schema (nothing usable: the JSON payload box).
export function askFields(schema) {
  const props = schema && typeof schema === "object" ? schema.properties : undefined;
  if (!props || typeof props !== "object") {
    return [{ name: "payload", type: "json", title: "Payload (any JSON value)", required: false }];
  }
  const required = Array.isArray(schema.required) ? schema.required : [];
  return Object.keys(props).sort().map((name) => {
    const p = props[name] ?? {};
    const type = ["number", "integer", "boolean"].includes(p.type) ? p.type : "string";
    return {
      name, type, title: p.title || name, description: p.description,
      enum: Array.isArray(p.enum) ? p.enum.map(String) : undefined,
      required: required.includes(name),
    };
  });
}

// askPayload reads the form's inputs as the schema types them: an unticked box is false, an
// empty optional number is left out; {problem} when a value does not parse.
export function askPayload(elements) {
  const out = {};
  for (const el of elements) {
    const type = el.dataset?.type;
    if (!type) continue;
    if (type === "json") {
      const raw = el.value.trim();
      try {
        return { payload: raw === "" ? null : JSON.parse(raw) };
      } catch {
        return { problem: "The payload is not valid JSON." };
      }
    }
    if (type === "boolean") out[el.name] = el.checked;
    else if (type === "string") out[el.name] = el.value;
    else if (el.value !== "") {
      const n = Number(el.value);
      if (!Number.isFinite(n) || (type === "integer" && !Number.isInteger(n))) {
        return { problem: `${el.name}: "${el.value}" is not ${type === "integer" ? "a whole number" : "a number"}.` };
      }
      out[el.name] = n;
    }
  }
  return { payload: out };
}
