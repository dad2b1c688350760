# Closed-loop throughput user for bench/http/run.sh: no wait between requests.
from locust import constant, task
from locust.contrib.fasthttp import FastHttpUser


class LoadUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def index(self):
        self.client.get("/")
