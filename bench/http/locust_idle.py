# Idle-user memory benchmark for bench/http/run.sh: one request, then a long wait.
from locust import constant, task
from locust.contrib.fasthttp import FastHttpUser


class IdleUser(FastHttpUser):
    wait_time = constant(900)

    @task
    def index(self):
        self.client.get("/")
