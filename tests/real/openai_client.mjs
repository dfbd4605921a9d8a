// The official openai npm client against llama-server at BASE_URL: chat and completions, each
// streamed and not, all with logprobs. Prints what the client parsed, one JSON line per call,
// with the fields that differ between two calls of the same server (id, created, timings, cache
// counts) blanked, so that a direct run and a run through `retrace record` compare byte for byte.
// Usage: node openai_client.mjs BASE_URL
const root = process.env.RETRACE_ROOT;
const { default: OpenAI } = await import(`${root}/tests/npm/node_modules/openai/index.mjs`);
const [baseURL] = process.argv.slice(2);

const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60000 });
const varying = new Set(["id", "created", "timings", "prompt_tokens_details"]);
const blank = (object) => JSON.stringify(object, (key, value) => (varying.has(key) ? "" : value));

// cache_prompt: false (a llama.cpp field the client passes through): with the prompt cached from
// the previous call, llama-server evaluates only its last token, and the logprobs then differ in
// the last digits from a full evaluation; each call must compute the same way to compare.
const chat = { model: "tiny-random-llama", cache_prompt: false, messages: [{ role: "user", content: "Tell me about the sea." }],
               max_tokens: 24, temperature: 0, logprobs: true, top_logprobs: 2 };
const completion = { model: "tiny-random-llama", cache_prompt: false, prompt: "Once upon a time", max_tokens: 24,
                     temperature: 0, logprobs: 2 };
const calls = [
  ["chat-stream", () => client.chat.completions.create({ ...chat, stream: true })],
  ["chat", () => client.chat.completions.create(chat)],
  ["completions-stream", () => client.completions.create({ ...completion, stream: true })],
  ["completions", () => client.completions.create(completion)],
];
for (const [call, create] of calls) {
  const result = await create();
  if (typeof result[Symbol.asyncIterator] === "function") {
    const chunks = [];
    for await (const chunk of result) chunks.push(blank(chunk));
    console.log(JSON.stringify({ call, chunks }));
  } else {
    console.log(JSON.stringify({ call, response: blank(result) }));
  }
}
