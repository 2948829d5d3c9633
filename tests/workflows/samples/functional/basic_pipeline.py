"""Port of MAF's ``samples/03-workflows/functional/basic_pipeline.py``: two plain async helpers
called in sequence by a ``@workflow`` function, whose return value is the run's output.

Adapted to MAF 1.23, where ``@workflow`` returns a definition and ``build()`` makes the
runnable workflow: the sample's ``data_pipeline.run(...)`` is ``data_pipeline.build().run(...)``.
"""

import asyncio

from workflows import workflow


# Plain async functions: no decorator, they run as any Python function does.
async def fetch_data(url: str) -> dict[str, str | int]:
    """Simulate fetching data from a URL."""
    return {"url": url, "content": f"Data from {url}", "status": 200}


async def transform_data(data: dict[str, str | int]) -> str:
    """Transform raw data into a summary string."""
    return f"[{data['status']}] {data['content']}"


# @workflow makes the function a workflow definition; build() gives it run(), streaming and
# as_agent(). Its first parameter receives the input given to run().
@workflow
async def data_pipeline(url: str) -> str:
    """A simple sequential data pipeline."""
    raw = await fetch_data(url)
    summary = await transform_data(raw)

    # Plain Python between the calls.
    is_valid = len(summary) > 0 and "[200]" in summary
    tag = "VALID" if is_valid else "INVALID"

    # The return value becomes the run's output (result.get_outputs()).
    return f"[{tag}] {summary}"


async def main():
    result = await data_pipeline.build().run("https://example.com/api/data")
    print("Output:", result.get_outputs()[0])
    print("State:", result.get_final_state())


if __name__ == "__main__":
    asyncio.run(main())
