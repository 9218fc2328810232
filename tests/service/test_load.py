"""A bounded load test on loopback: concurrent clients for a fixed time against a server
with a one-slot queue. No 5xx, every response well formed, back-pressure as 429."""

import threading
import time

import httpx

CLIENTS, SECONDS, MAX_REQUESTS = 6, 15.0, 400
REQUEST = {"passages": ["The bridge opened in 1937.", "It is orange."], "answer": "The bridge opened in 1937."}


def test_concurrent_clients_get_answers_or_429(live_server):
    responses: list[httpx.Response] = []
    lock = threading.Lock()
    stop = time.time() + SECONDS

    def client():
        with httpx.Client(base_url=live_server.url, timeout=120) as http:
            while time.time() < stop:
                response = http.post("/v1/detect", json=REQUEST)
                with lock:
                    responses.append(response)
                    if len(responses) >= MAX_REQUESTS:
                        return
                if response.status_code == 429:
                    time.sleep(0.05)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 150)
    assert not any(t.is_alive() for t in threads)

    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {200, 429}, statuses
    assert statuses.count(200) >= 1 and statuses.count(429) >= 1
    for r in responses:
        body = r.json()
        if r.status_code == 200:
            assert [s["text"] for s in body["sentences"]] == [REQUEST["answer"]]
            assert isinstance(body["sentences"][0]["flagged"], (bool, type(None)))
        else:
            assert int(r.headers["Retry-After"]) >= 1 and "busy" in body["error"]
